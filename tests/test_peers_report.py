"""The report's "Peers on the same data" section from peers.json: every tool's row,
every comparison's outcome, the KenLM agreement and a skipped peer's reason."""

from firth.peers_report import TITLE, peers_section


def result() -> dict:
    def tool(what, wps, ana):
        return {
            "what": what,
            "version": "1.0",
            "runs": 2,
            "words_per_second": wps,
            "analogy_3cosadd": ana,
            "analogy_3cosadd_sd": 0.001,
            "wordsim353_spearman": 0.5,
            "wordsim353_spearman_sd": 0.01,
            "simlex999_spearman": 0.2,
            "simlex999_spearman_sd": 0.02,
        }

    def test(outcome, a, b):
        return {"outcome": outcome, "firth": a, "peer": b}

    return {
        "command": "python benchmarks/peers.py",
        "machine": {"cpus": 2},
        "rule": "paired bootstrap over test items (and seeds)",
        "tasks": {
            "vectors": {
                "summary": {
                    "firth-sgns": tool("Firth SGNS", 900_000, 0.05),
                    "gensim-sg-ns": tool("gensim skip-gram", 1_000_000, 0.04),
                },
                "comparisons": [
                    {
                        "firth": "firth-sgns",
                        "peer": "gensim-sg-ns",
                        "words_per_second_ratio": 0.9,
                        "tests": {
                            "analogy": test("Firth ahead", 0.05, 0.04),
                            "wordsim353": test("inconclusive", 0.5, 0.49),
                            "simlex999": test("peer ahead", 0.18, 0.2),
                        },
                    }
                ],
                "skipped": {"fasttext-sg": "fasttext is not installed"},
            },
            "ngram": {
                "order": 5,
                "test_tokens": 41384,
                "firth": {
                    "build_seconds": 14.4,
                    "ngrams": [3, 2],
                    "arpa_seconds": 21.7,
                    "perplexity": 53.5173149,
                    "tokens_per_second": 24366,
                },
                "kenlm_reads_firth_arpa": {
                    "kenlm_version": "0.3.0",
                    "perplexity": 53.5173150,
                    "tokens_per_second": 3638990,
                    "agree_4_significant_digits": True,
                    "relative_difference": 2.3e-9,
                },
                "skipped": {"lmplz": "cmake: not found"},
            },
            "nmt": {
                "summary": {
                    "firth-bahdanau": nmt_row(6500, 50.1),
                    "joeynmt-bahdanau": nmt_row(2100, 48.7),
                    "opennmt-bahdanau": nmt_row(7000, 52.0),
                },
                "comparisons": [
                    {
                        "model": "bahdanau",
                        "train_tokens_per_second_ratio": 3.1,
                        "beam_sentences_per_second_ratio": 11.8,
                        "tests": {
                            "beam_bleu": test("inconclusive", 50.1, 48.7),
                            "beam_chrf": test("Firth ahead", 66.0, 64.2),
                        },
                    },  # written before OpenNMT-py: no "peer", JoeyNMT's
                    {
                        "model": "bahdanau",
                        "peer": "opennmt",
                        "train_tokens_per_second_ratio": 0.93,
                        "beam_sentences_per_second_ratio": 1.5,
                        "tests": {
                            "beam_bleu": test("peer ahead", 50.1, 52.0),
                            "beam_chrf": test("inconclusive", 66.0, 66.1),
                        },
                    },
                ],
                "settings": "1 epoch each",
                "skipped": {},
            },
            "taggers": {
                "summary": {
                    "firth-wnut16": tag_row(0.31, 450.0),
                    "flair-wnut16": tag_row(0.33, 100.0),
                },
                "comparisons": [
                    {
                        "data": "wnut16",
                        "metric": "entity F1",
                        "outcome": "peer ahead",
                        "train_sentences_per_second_ratio": 4.5,
                        "tag_sentences_per_second_ratio": 3.5,
                    }
                ],
                "skipped": {},
            },
        },
    }


def nmt_row(tps, bleu):
    return {
        "runs": 2,
        "train_target_tokens_per_second": tps,
        "beam_sentences_per_second": 40.0,
        **{k: bleu for k in ("greedy_bleu", "beam_bleu", "beam_chrf")},
        **{f"{k}_sd": 0.5 for k in ("greedy_bleu", "beam_bleu", "beam_chrf")},
    }


def tag_row(score, sps):
    return {
        "runs": 2,
        "score": score,
        "score_sd": 0.01,
        "train_sentences_per_second": sps,
    }


def test_section_lists_every_tool_comparison_and_reason():
    sec = peers_section(result())
    assert sec.title == TITLE
    tables = dict(sec.tables)
    (_, vec), (_, cmp), (_, lm), (_, mt), (_, mt_cmp), (_, tag) = (
        tables[t] for t in tables
    )
    assert [r[0] for r in vec] == ["Firth SGNS (1.0)", "gensim skip-gram (1.0)"]
    assert cmp[0][1:] == [
        "0.90x",
        "Firth ahead: 0.0500 vs 0.0400",
        "inconclusive: 0.5000 vs 0.4900",
        "peer ahead: 0.1800 vs 0.2000",
    ]
    assert lm[0][2] == "53.5173" and lm[1][2] == "53.5173"
    assert "3,638,990" in lm[1][3]
    assert "to 4 significant digits: True" in sec.intro
    assert "fasttext-sg not run: fasttext is not installed" in sec.intro
    assert "lmplz not run: cmake: not found" in sec.intro
    assert [r[0] for r in mt] == [
        "Firth GRU + Bahdanau attention",
        "JoeyNMT GRU + Bahdanau attention",
        "OpenNMT-py GRU + Bahdanau attention",
    ]
    assert mt[0][2] == "6,500" and mt[1][4] == "48.70 ± 0.50"
    assert mt_cmp == [
        [
            "GRU + Bahdanau attention",
            "JoeyNMT",
            "3.10x",
            "11.80x",
            "inconclusive: 50.10 vs 48.70",
            "Firth ahead: 66.00 vs 64.20",
        ],
        [
            "GRU + Bahdanau attention",
            "OpenNMT-py",
            "0.93x",
            "1.50x",
            "peer ahead: 50.10 vs 52.00",
            "inconclusive: 66.00 vs 66.10",
        ],
    ]
    assert "Translation settings: 1 epoch each." in sec.intro
    assert tag[0][:5] == [
        "wnut16",
        "entity F1",
        "0.310 ± 0.010",
        "0.330 ± 0.010",
        "peer ahead",
    ]
    assert tag[0][5] == "4.50x (450 vs 100/s)" and tag[0][6] == "3.50x"


def test_no_section_before_the_benchmark_ran():
    assert peers_section(None) is None
    assert peers_section({"tasks": {}}) is None


def test_section_names_the_commit_of_each_task_run_on_its_own():
    r = result()
    r["tasks"]["vectors"]["head_commit"] = "c1ae76db" + "0" * 32
    r["tasks"]["nmt"]["head_commit"] = "309e4d5a" + "0" * 32
    sec = peers_section(r)
    assert "Each task is rerun on its own (vectors at c1ae76d, nmt at 309e4d5)." in (
        sec.intro
    )
    assert "`python benchmarks/peers.py` ran each peer" in sec.intro
