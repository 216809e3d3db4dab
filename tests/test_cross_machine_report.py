"""The report's "Same seed, another machine" section from cross_machine.json: one
row per tracked score with both machines' values, the delta, the seed band and
compare's verdict; the note beside the seed spreads points to it; nothing when the
benchmark has not run."""

from firth.cross_machine_report import NOTE, TITLE, cross_machine_section


def result() -> dict:
    return {
        "command": "python benchmarks/cross_machine.py ",
        "native": "AVX512",
        "emulated": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"},
        "stages": {"train-tagger@wnut16-crf-13": 60.0, "evaluate-tagger@wnut16-crf": 9},
        "metrics": [
            {
                "path": "reports/tagging/wnut16-crf/eval.json",
                "key": "summary.random.f1.mean",
                "native": 0.1183,
                "other": 0.1053,
                "delta": -0.013,
                "tolerance": 0.01,
                "seed_band": 0.02209,
                "inside_band": True,
                "status": "noise",
            },
            {
                "path": "reports/nmt/transformer/eval.json",
                "key": "beam.bleu",
                "native": 20.0,
                "other": 20.1,
                "delta": 0.1,
                "tolerance": 0.5,
                "seed_band": None,
                "inside_band": None,
                "status": "",
            },
        ],
        "summary": {"tracked": 2, "moved": 2, "inside_seed_band": 1, "flagged": 0},
    }


def test_one_row_per_score_with_both_machines_and_the_band():
    sec = cross_machine_section(result())
    assert sec.title == TITLE and TITLE in NOTE
    ((_, (header, rows)),) = sec.tables
    assert header == [
        "score",
        "this machine",
        "other kernels",
        "delta",
        "seed band",
        "verdict",
    ]
    assert rows == [
        [
            "tagging/wnut16-crf/eval.json: summary.random.f1.mean",
            "0.1183",
            "0.1053",
            "-0.013",
            "±0.0221",
            "noise",
        ],
        [
            "nmt/transformer/eval.json: beam.bleu",
            "20",
            "20.1",
            "0.1",
            "-",
            "within tolerance",
        ],
    ]
    assert "ATEN_CPU_CAPABILITY=avx2" in sec.intro
    assert "2 of 2 tracked scores moved, 1 inside the seed band" in sec.intro
    assert "verdicts: 1 within tolerance, 1 noise." in sec.intro


def test_nothing_before_the_benchmark_ran():
    assert cross_machine_section(None) is None
    assert cross_machine_section({"metrics": []}) is None
