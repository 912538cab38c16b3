"""The seed experiments: each module runs one seed series' benchmark through the model
and returns rows of (metric, seed before/after/delta as published, thplab before/after/delta,
same direction?). Published figures are reference values only, never model inputs."""
