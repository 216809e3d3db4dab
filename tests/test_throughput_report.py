"""The report's trainer-throughput section from benchmarks/results/
throughput.json: one row per trainer with both sides' rates and the validation
verdict, the curves overlaid, nothing when the benchmark has not run."""

from firth.throughput_report import throughput_section


def result(same):
    return {
        "commit": "0123456789abcdef",
        "base": "89c8c5e",
        "command": "python benchmarks/throughput.py --base 89c8c5e --only tagger",
        "trainers": {
            "tagger": {
                "stage": "train-tagger@wnut16-crf-13",
                "unit": "sentences",
                "per_second": {"old": [562.9, 582.1], "new": [766.5, 815.0]},
                "speedup": 1.4,
                "validation": {
                    "column": "valid_score",
                    "lower_is_better": False,
                    "at_equal_epochs": [
                        {"epoch": 1.0, "old": 0.1, "new": 0.12},
                        {"epoch": 2.0, "old": 0.2, "new": 0.19},
                    ],
                    "new_same_or_better_at_every_point": same,
                },
            }
        },
    }


def test_one_row_per_trainer_with_both_rates_and_the_verdict():
    sec = throughput_section(result(False))
    (_, (header, rows)), (_, (_, commands)) = sec.tables
    assert header[-1] == "validation same or better"
    assert rows == [
        [
            "tagger",
            "train-tagger@wnut16-crf-13",
            "sentences",
            "`0123456`",  # a row without its own commit: the file's
            "563, 582",
            "766, 815",
            "1.40x",
            "not at every point",
        ]
    ]
    assert commands == [["tagger", f"`{result(False)['command']}`"]]
    assert "89c8c5e" in sec.intro


def test_each_row_names_the_commit_and_command_that_measured_it():
    """Rows measured by different runs keep their own commit and command."""
    r = result(True)
    r["trainers"]["lm"] = {
        **r["trainers"]["tagger"],
        "stage": "train-lm@lstm",
        "commit": "fedcba9876543210",
        "command": "python benchmarks/throughput.py --base 89c8c5e --only lm",
    }
    sec = throughput_section(r)
    (_, (_, rows)), (_, (_, commands)) = sec.tables
    assert [row[3] for row in rows] == ["`fedcba9`", "`0123456`"]
    assert commands[0] == [
        "lm",
        "`python benchmarks/throughput.py --base 89c8c5e --only lm`",
    ]
    ((_, png),) = sec.figures
    assert png.startswith(b"\x89PNG")
    assert throughput_section(result(True)).tables[0][1][1][0][-1] == "yes"


def test_nothing_before_the_benchmark_ran():
    assert throughput_section(None) is None
    assert throughput_section({"trainers": {}}) is None
