"""The seed experiments: each module runs one seed series' benchmarks in the model and
returns tables of thplab's figures beside the series' published ones (reference values)."""
