"""Seed 003 (THP swap-out/swap-in in one piece): the experiment's table, quick size."""

from thplab.experiments import seed003


def test_seed003_quick_table():
    out = seed003.run(quick=True)
    t = out.tables[0]
    assert t.title.startswith("swap-w-seq on ")
    assert len(t.rows) == len(seed003.SEED)
    for r, (name, (sb, sa, sd)) in zip(t.rows, seed003.SEED.items(), strict=True):
        assert name.startswith(r.metric)
        # the seed's figures are printed as published
        assert (r.seed_before, r.seed_after, r.seed_delta) == (sb, sa, sd)
    by = {r.metric: r for r in t.rows}
    # the seed's policy keeps THPs through swap and swaps faster; the model agrees in direction
    for m in (
        "throughput",
        "THP share of anon memory",
        "TLB-flush IPIs",
        "meminfo.AnonHugePages",
        "vmstat.swap.si",
        "vmstat.swap.so",
    ):
        assert by[m].direction == "same", by[m]
    assert by["THP share of anon memory"].thplab_after > 90
    assert by["THP share of anon memory"].thplab_before < 20
    b, a = out.data["before"]["_counters"], out.data["after"]["_counters"]
    # mainline: THPs go out whole but come back as base pages; the seed: they come back whole
    assert b["thp_swpout"] > 0 and b["thp_swpin"] == 0 and a["thp_swpin"] > 0
    assert b["oom_kill"] == 0 and a["oom_kill"] == 0
    # the counters table is thplab's only
    assert all(r.seed_before is None for r in out.tables[1].rows)
    figs = seed003.figures(out)
    assert len(figs) == 2 and "throughput and THP share" in figs[0].title
    # no wall-clock thresholds: host time is only printed
