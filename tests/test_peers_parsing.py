"""What benchmarks/peers.py reads from its peers' logs: lines made with the peers'
own format strings (JoeyNMT 2.3.0's training.py and prediction.py, flair 0.15.1's
trainer), parsed back to the numbers that went in; JoeyNMT's batches per epoch."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import peers  # noqa: E402
import peers_flair  # noqa: E402

JOEY_STEP = (
    "Epoch %3d, Step: %8d, Batch Loss: %12.6f, Batch Acc: %.6f, "
    "Tokens per Sec: %8.0f, Lr: %.6f"
)
JOEY_EPOCH = (
    "Epoch %3d, total training loss: %.2f, "
    "num. of seqs: %d, num. of tokens: %d, %.4f[sec]"
)
JOEY_GEN = "Generation took %.4f[sec]."
JOEY_EVAL = "Evaluation result (%s): %s, %.4f[sec]"  # prediction.py's


def joey_scores(scores: dict) -> str:
    """prediction.py's score string: each metric as f"{name}: {value:6.2f}"."""
    return ", ".join(f"{k}: {v:6.2f}" for k, v in scores.items())


def test_joeynmt_log_gives_tokens_seconds_steps_and_decoding(tmp_path):
    lines = [
        "2026-12-04 21:00:00,000 - INFO - joeynmt.training - " + x
        for x in (
            JOEY_STEP % (1, 10, 5.5, 0.1, 2100, 0.005),
            JOEY_STEP % (1, 20, 5.1, 0.12, 2200, 0.005),
            JOEY_EVAL
            % (
                "greedy",
                joey_scores({"bleu": 3.1, "loss": 4.5, "ppl": 90.02, "acc": 0.2}),
                3.5,
            ),
            JOEY_EPOCH % (1, 812.25, 1500, 51896, 24.8012),
            JOEY_EVAL
            % (
                "greedy",
                joey_scores({"bleu": 9.87, "loss": 3.2, "ppl": 24.53, "acc": 0.3}),
                3.1,
            ),
            JOEY_STEP % (2, 30, 4.9, 0.13, 2300, 0.004),
            JOEY_EPOCH % (2, 700.0, 1500, 51896, 23.5),
            JOEY_GEN % 1.4812,
            JOEY_GEN % 6.75,
        )
    ]
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    got = peers._joey_log(log)
    assert got["tokens"] == 2 * 51896
    assert got["seconds"] == pytest.approx(24.8012 + 23.5)
    assert got["steps"] == 30
    assert got["generation_seconds"] == [1.4812, 6.75]
    assert got["valid_ppls"] == [90.02, 24.53]  # not the BLEU, not the loss


def test_joeynmt_batches_per_epoch():
    # a batch closes once (its longest sentence) x (its size) reaches the budget
    assert peers._joey_steps([1] * 7, [1] * 7, batch=1, seed=0) == 7
    assert peers._joey_steps([3] * 7, [2] * 7, batch=6, seed=0) == 4  # 2+2+2+1
    assert peers._joey_steps([5, 1, 1], [1, 1, 1], batch=10**6, seed=0) == 1
    lengths = [4, 9, 2, 7, 7, 1, 3, 8]
    for seed in range(5):  # every order covers each sentence once
        n = peers._joey_steps(lengths, lengths, batch=12, seed=seed)
        assert 3 <= n <= len(lengths)


def flair_line(epoch, i, n, seconds):
    return (
        f"2026-12-04 21:06:18,756 epoch {epoch} - iter {i}/{n} - loss {4.19:.8f}"
        f" - time (sec): {seconds:.2f} - samples/sec: {2200.67:.2f}"
        f" - lr: {0.005:.6f} - momentum: {0.0:.6f}"
    )


def test_flair_log_gives_training_sentences_and_seconds():
    log = "\n".join(
        [
            flair_line(1, 4, 8, 0.88),
            flair_line(1, 8, 8, 1.56),
            "2026-12-04 21:06:20,110 EPOCH 1 done: loss 3.7657 - lr: 0.005000",
            flair_line(2, 7, 8, 1.40),  # the last line before the epoch ends
        ]
    )
    sentences, seconds = peers_flair.training_rate(log, 120)
    assert sentences == pytest.approx(120 + 120 * 7 / 8)
    assert seconds == pytest.approx(1.56 + 1.40)


def test_bio_tags_from_spans():
    class Tok:
        def __init__(self, idx):
            self.idx = idx

    class Span:
        def __init__(self, tag, idx):
            self.tag, self.tokens = tag, [Tok(i) for i in idx]

    class Sent:
        def __len__(self):
            return 6

        def get_spans(self, label):
            assert label == "predicted"
            return [Span("person", [2, 3]), Span("geo-loc", [6])]

    assert peers_flair.bio_tags(Sent(), "predicted") == [
        "O",
        "B-person",
        "I-person",
        "O",
        "O",
        "B-geo-loc",
    ]


def _nmt_part(models, tools, commit):
    peers_run = [t for t in tools if t != "firth"]
    return {
        "head_commit": commit,
        "rows": [{"model": m, "tool": t, "c": commit} for m in models for t in tools],
        "summary": {f"{t}-{m}": {"c": commit} for m in models for t in tools},
        "comparisons": [
            {"model": m, "peer": p, "c": commit} for m in models for p in peers_run
        ],
        "skipped": {},
    }


def test_a_partial_nmt_run_keeps_the_other_models():
    old = _nmt_part(["bahdanau", "transformer"], ["firth", "joeynmt"], "old")
    old["joeynmt"] = {"version": "2.3.0"}
    new = _nmt_part(["transformer"], ["firth", "joeynmt"], "new")
    got = peers.merge_nmt(old, new)
    assert [(r["model"], r["c"]) for r in got["rows"]] == [
        ("bahdanau", "old"),
        ("bahdanau", "old"),
        ("transformer", "new"),
        ("transformer", "new"),
    ]
    assert got["summary"] == {
        "firth-bahdanau": {"c": "old"},
        "joeynmt-bahdanau": {"c": "old"},
        "firth-transformer": {"c": "new"},
        "joeynmt-transformer": {"c": "new"},
    }
    assert [(c["model"], c["c"]) for c in got["comparisons"]] == [
        ("bahdanau", "old"),
        ("transformer", "new"),
    ]
    assert got["rows"][0]["head_commit"] == "old"  # what it kept says when it ran
    assert got["joeynmt"] == {"version": "2.3.0"}  # the peer block it did not rerun
    assert peers.merge_nmt(None, new) is new


def test_a_run_of_one_peer_keeps_the_other_peers_comparisons():
    old = _nmt_part(["bahdanau"], ["firth", "joeynmt"], "old")
    del old["comparisons"][0]["peer"]  # files from before OpenNMT-py: JoeyNMT's
    old["skipped"] = {"opennmt": "tried: ..."}
    new = _nmt_part(["bahdanau"], ["firth", "opennmt"], "new")
    got = peers.merge_nmt(old, new)
    assert sorted((r["tool"], r["c"]) for r in got["rows"]) == [
        ("firth", "new"),
        ("joeynmt", "old"),
        ("opennmt", "new"),
    ]
    assert [(c.get("peer", "joeynmt"), c["c"]) for c in got["comparisons"]] == [
        ("joeynmt", "old"),
        ("opennmt", "new"),
    ]
    assert got["skipped"] == {}  # it ran now


# OpenNMT-py 3.0.4's format strings: onmt/utils/statistics.py (a step's report),
# onmt/trainer.py and onmt/utils/report_manager.py (a validation),
# onmt/translate/translator.py (-report_time)
ONMT_STEP = (
    "Step %s; acc: %2.1f; ppl: %5.1f; xent: %2.1f; lr: %7.5f; sents: %7.0f; "
    "bsz: %4.0f/%4.0f/%2.0f; %3.0f/%3.0f tok/s; %6.0f sec;"
)


ONMT_STEP_NO, ONMT_STEP_OF = "%2d", "%s/%5d"
ONMT_PPL = "Validation perplexity: %g"
ONMT_TIME = "Total translation time (s): %.1f"


def onmt_step(step, steps, sents, seconds):
    fmt = ONMT_STEP_OF % (ONMT_STEP_NO % step, steps)
    return ONMT_STEP % (
        fmt,
        5.2,
        600.1,
        6.4,
        0.005,
        sents,
        900,
        910,
        27,
        8000,
        8100,
        seconds,
    )


def test_opennmt_log_gives_steps_sentences_and_training_seconds(tmp_path):
    prefix = "[2026-12-06 04:52:01,993 INFO] "
    lines = [
        prefix + onmt_step(1, 120, 31, 0),
        prefix + onmt_step(2, 120, 20, 1),
        prefix + "valid stats calculation and sentences rebuilding\n"
        "                           took: 2.5 s.",
        prefix + ONMT_PPL % 90.25,
        prefix + onmt_step(120, 120, 16, 47),
        prefix + "valid stats calculation and sentences rebuilding\n"
        "                           took: 1.5 s.",
        prefix + ONMT_PPL % 24.5,
        prefix + ONMT_TIME % 3.25,
    ]
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    got = peers._onmt_log(log)
    assert got["steps"] == 120
    assert got["sentences"] == 31 + 20 + 16
    assert got["seconds"] == pytest.approx(47 - 2.5 - 1.5)  # validations excluded
    assert got["valid_ppls"] == [90.25, 24.5]
    assert got["translation_seconds"] == [3.2]  # "%.1f" of 3.25


def test_opennmt_batches_per_epoch():
    # sorted by max(source, target + <s> and </s>); a batch closes once size x
    # longest reaches the budget, and the example that overflows it opens the next
    src, tgt = [3, 1, 3, 3, 5, 5], [1, 1, 1, 1, 1, 1]  # keys 3, 3, 3, 3, 5, 5
    srcs = list("abcdef")
    assert peers._onmt_steps(src, tgt, srcs, 10) == (3, 6)  # [3 3 3] [3 5] [5]
    assert peers._onmt_steps(src, tgt, srcs, 9) == (4, 6)  # [3 3 3] [3] [5] [5]
    # each alone overflows 1: it stays until the next one opens a new batch
    assert peers._onmt_steps(src, tgt, srcs, 1) == (6, 6)
    # a source seen since the last batch closed is skipped (OpenNMT-py drops it)
    assert peers._onmt_steps([2, 2, 2], [0, 0, 0], list("aab"), 100) == (1, 2)
    assert peers._onmt_steps([2, 2, 2], [0, 0, 0], list("aab"), 2) == (3, 3)
    # after an overflow the one carried over is not "seen": its twin is taken
    assert peers._onmt_steps([2, 3, 3], [0, 0, 0], list("abb"), 5) == (3, 3)


def test_opennmt_transformer_peaks_at_firths_rate_after_its_warm_up(tmp_path):
    from firth.config import load_section
    from firth.nmt.config import Nmt
    from firth.nmt.config import schedule as model_schedule

    cfg = load_section("nmt", ROOT / "params.yaml", schema=Nmt)
    own = model_schedule(cfg, "transformer")
    conf = peers._onmt_config("transformer", 13, tmp_path, tmp_path, 1000, cfg, 50)
    warmup, d = conf["warmup_steps"], conf["hidden_size"]
    assert warmup == round(own.warmup * 1000)

    def noam(step):  # onmt/utils/optimizers.py's noam_decay times the rate
        return conf["learning_rate"] * d**-0.5 * min(step**-0.5, step * warmup**-1.5)

    rates = [noam(s) for s in range(1, 1001)]
    assert max(rates) == pytest.approx(own.lr)
    assert rates.index(max(rates)) + 1 == warmup
    rnn = peers._onmt_config("bahdanau", 13, tmp_path, tmp_path, 1000, cfg, 50)
    assert (rnn["decay_method"], rnn["learning_rate"]) == ("none", cfg.common.lr)
    assert rnn["enc_hid_size"] == rnn["dec_hid_size"] == cfg.common.hidden


@pytest.mark.parametrize(
    ("schedule", "kind", "expect"),
    [
        ("recipe", "bahdanau", "exponential"),
        ("recipe", "transformer", "warmupinversesquareroot"),
        ("constant", "transformer", "exponential"),
        ("inverse-sqrt", "bahdanau", "warmupinversesquareroot"),
    ],
)
def test_joeynmt_schedule_follows_its_recipes(tmp_path, schedule, kind, expect):
    from firth.config import load_section
    from firth.nmt.config import Nmt
    from firth.nmt.config import schedule as model_schedule

    cfg = load_section("nmt", ROOT / "params.yaml", schema=Nmt)
    conf = peers._joey_config(
        kind, 13, 1, tmp_path, tmp_path / "m", 400, cfg, 5, 1.0, schedule
    )
    train = conf["training"]
    assert train["scheduling"] == expect
    if expect == "exponential":
        assert train["decrease_factor"] == 1.0  # a constant rate
    else:
        warmup = model_schedule(cfg, kind).warmup  # the model's own warm-up share
        assert train["learning_rate_warmup"] == max(1, round(warmup * 400))


def test_joeynmt_setting_replaces_rate_and_batch_only(tmp_path):
    from firth.config import load_section
    from firth.nmt.config import Nmt

    cfg = load_section("nmt", ROOT / "params.yaml", schema=Nmt)
    args = ("transformer", 13, 1, tmp_path, tmp_path / "m", 400, cfg, 5, 1.0, "recipe")
    own = peers._joey_config(*args)
    tuned = peers._joey_config(*args, (0.0005, 1000))
    assert (tuned["training"]["learning_rate"], tuned["training"]["batch_size"]) == (
        0.0005,
        1000,
    )
    for key in ("learning_rate", "batch_size"):
        own["training"].pop(key), tuned["training"].pop(key)
    assert own == tuned


def test_joey_grid_points_parse_or_say_what_was_expected():
    import argparse

    assert peers._grid_point("0.0005:1000") == (0.0005, 1000)
    with pytest.raises(argparse.ArgumentTypeError, match="expected LR:BATCH"):
        peers._grid_point("0.0005")
