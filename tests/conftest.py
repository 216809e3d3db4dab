import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # so tests can import stages.<name>


def pytest_configure(config):
    """Under pytest-xdist (make test-fast) one torch thread per worker: the workers
    already fill the cores, and two-thread kernels beside them only contend."""
    import os

    if os.environ.get("PYTEST_XDIST_WORKER"):
        import torch

        torch.set_num_threads(1)


@pytest.fixture(scope="session")
def harness():
    """One Prefect test server (a temporary database) for every test that runs a
    flow: a start took 15-25 s on this 2-core machine, and the flow tests only read
    back what they themselves wrote (their own flow runs, pools and artifact keys)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):  # a busy machine is slow
        yield


def make_tiny_repo(path: Path, *, manifests: bool = False) -> dict[str, str]:
    """A git + DVC repository at ``path`` holding Firth's code and dvc.yaml with the
    tiny profile as params.yaml (as a clone has them; reports/nli holds only its
    README until NLI is enabled). With ``manifests``, the code manifests too, as
    committed (for tests that run Firth's own DAG). Returns the environment to run
    dvc in."""
    import os
    import shutil
    import subprocess

    for item in ("src", "stages", "dvc.yaml", "benchmarks", "reports/nli"):
        src = ROOT / item
        if src.is_dir():
            shutil.copytree(
                src,
                path / item,
                ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
            )
        else:
            shutil.copy(src, path / item)
    shutil.copy(ROOT / "profiles" / "tiny.yaml", path / "params.yaml")
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = str(path / "src")
    env["DVC_NO_ANALYTICS"] = "1"
    for who in ("AUTHOR", "COMMITTER"):
        env.setdefault(f"GIT_{who}_NAME", "firth tests")
        env.setdefault(f"GIT_{who}_EMAIL", "tests@firth.invalid")
    for cmd in (["git", "init", "-q", "-b", "main"], ["dvc", "init", "-q"]):
        subprocess.run(cmd, cwd=path, env=env, check=True, capture_output=True)
    shutil.copy(ROOT / ".dvcignore", path / ".dvcignore")  # (dvc init wrote its own)
    if not manifests:
        return env
    # the code manifests are committed with the code in a clone; here they are
    # written and recorded in dvc.lock (`dvc commit`, the same bytes the code-*
    # stages would write), so that a test's first `dvc repro` runs the task stages
    import yaml

    from firth.code_deps import manifest, manifest_path, manifest_target
    from firth.io import write_json

    committed = []
    for name, stage in yaml.safe_load((path / "dvc.yaml").read_text())[
        "stages"
    ].items():
        target = manifest_target(stage.get("cmd", ""))
        if target is not None:
            write_json(path / manifest_path(target), manifest(path, target))
            committed.append(name)
    subprocess.run(
        ["dvc", "commit", "-f", "-q", *committed],
        cwd=path,
        env=env,
        check=True,
        capture_output=True,
    )
    return env


def embedding_eval(
    method, *, wordsim=None, cos_add=None, cos_add_incl=None, only_b=0.0
):
    """A one-seed EmbeddingEval holding the given scores (None: the score or its
    set is absent)."""
    from firth.embeddings.results import EmbeddingEval, Scores

    scores: dict = {"vocab": 1000, "analogy": {}, "similarity": {}}
    if cos_add is not None:
        top = {"coverage": 0.5, "3cosadd": cos_add, "3cosmul": cos_add}
        top |= {"3cosadd_incl": cos_add_incl, "only_b": only_b}
        scores["analogy"]["analogy-google"] = {"top": top}
    if wordsim is not None:
        scores["similarity"]["wordsim353"] = {"spearman": wordsim, "coverage": 0.9}
    return EmbeddingEval.of(method, {13: Scores[float | None].model_validate(scores)})


def lm_eval(family, *, bits_per_char=1.5, perplexity=100.0, unigram=400.0):
    """A word-level LmEval with the given test scores (valid equal to test)."""
    from firth.lm.results import LmEval

    split = {
        "perplexity": perplexity,
        "bits_per_char": bits_per_char,
        "nll_bits": 1.0,
        "tokens": 10,
        "characters": 50,
        "oov_rate": 0.0,
        "tokens_per_second": 1,
        "baselines": {
            "uniform": {"perplexity": 1000.0, "bits_per_char": 3.0},
            "unigram": {"perplexity": unigram, "bits_per_char": 2.0},
        },
    }
    return LmEval.model_validate(
        {"run": family, "family": family, "seed": 13, "unit": "word", "vocab": 1000}
        | {"valid": split, "test": split}
    )


def nmt_eval(run, model, bleu, chrf, *, pointer=False, greedy=None):
    """An NmtEval with the given beam scores (greedy: (bleu, chrf), else equal)."""
    from firth.nmt.results import NmtEval

    def scores(b, c):
        return {"bleu": b, "chrf": c, "chrf++": c, "mean_words": 20.0} | {
            "repeated_trigrams": 0.0,
            "source_word_share": 0.5,
        }

    g = greedy or (bleu, chrf)
    return NmtEval.model_validate(
        {"run": run, "model": model, "test_pairs": 100, "pointer": pointer}
        | {"greedy": scores(*g), "beam": scores(bleu, chrf), "contamination": {}}
        | {"reference_repeated_trigrams": 0.0, "reference_source_word_share": 0.7}
    )


def tagger_eval(run, head, *, shares=(0.0,), gap=0.0, f1=(0.4, 0.45), word_only=0.2):
    """A BIO TaggerEval: one model per invalid-BIO share (random init), the
    random and sgns F1 seed means, the word-only baseline's F1, and a random-init
    contamination split whose dirty sentences score ``gap`` above the clean."""
    from firth.results import Spread
    from firth.tagging.results import TaggerEval

    def split(dirty, clean):
        return {"all": clean, "dirty": dirty, "clean": clean, "n_all": 10} | {
            "n_dirty": 3,
            "n_clean": 7,
            "clean_share": 0.7,
            "clean_vs_all": 0.0,
        }

    def scores(f, share):
        return {"sentences": 10, "tokens": 100, "accuracy": 0.9, "oov_tokens": 5} | {
            "oov_accuracy": 0.5,
            "f1": f,
            "invalid_bio_share": share,
            "contamination": split(f, f),
        }

    def summary(f):
        return {"accuracy": Spread.of([0.9]), "f1": Spread.of([f])}

    return TaggerEval.model_validate(
        {"run": run, "data": "ner", "head": head, "scheme": "BIO", "metric": "f1"}
        | {"test_sentences": 10, "test_tokens": 100, "test_oov_share": 0.05}
        | {"test_tokens_in_vocab": {}, "inits": ["random", "sgns"], "seeds": [13]}
        | {"vectors_paths": {}, "examples": {}}
        | {"summary": {"random": summary(f1[0]), "sgns": summary(f1[1])}}
        | {"contamination": {"random": split(0.5 + gap, 0.5)}}
        | {"baselines": {"word-only": scores(word_only, 0.0)}}
        | {
            "models": [
                {"init": "random", "seed": 13 + i} | scores(f1[0], s)
                for i, s in enumerate(shares)
            ]
        }
    )


def nli_eval(model, *, accuracy, majority):
    """An NliEval of one seed with the given test accuracy and majority baseline."""
    from firth.nli.results import NliEval
    from firth.results import Spread

    split = {"all": accuracy, "dirty": None, "clean": accuracy, "n_all": 10} | {
        "n_dirty": 0,
        "n_clean": 10,
        "clean_share": 1.0,
        "clean_vs_all": 0.0,
    }

    def scores(acc):
        return {"accuracy": acc, "examples": 10, "per_label": {}, "confusion": []} | {
            "predicted_share": {},
            "contamination": split,
        }

    return NliEval.model_validate(
        {"run": f"snli-{model}", "data": "snli", "model": model, "metric": "accuracy"}
        | {"test_examples": 10, "test_label_share": {}, "seeds": [13]}
        | {"summary": {"accuracy": Spread.of([accuracy])}, "accuracy": accuracy}
        | {"baselines": {"majority": {"label": "entailment"} | scores(majority)}}
        | {"contamination": split, "models": [{"seed": 13} | scores(accuracy)]}
        | {"examples": [], "examples_sha256": "0" * 64}
    )


def stage_command(root: Path, stage: str) -> list[str]:
    """The DVC stage ``stage``'s command as words (``python``, its script, its
    arguments): Firth's dvc.yaml (copied into ``root`` when it has none) resolved
    against ``root``'s params.yaml, as `firth translate` and the other queries
    read it (firth.query.stage_command)."""
    import shutil

    from firth.query import stage_command as resolved

    if not (root / "dvc.yaml").exists():
        shutil.copy(ROOT / "dvc.yaml", root / "dvc.yaml")
    return resolved(root, stage)


def stage_argv(root: Path, stage: str) -> list[str]:
    """The arguments the DVC stage ``stage`` passes its script."""
    return stage_command(root, stage)[2:]


OPENED: dict[str, set] = {}  # stage -> (path, mode) its in-process runs opened
_running: list[str] = []  # the stage run_stage is running


def _record_opens(event: str, args: tuple) -> None:
    if _running:
        from firth.stage_cli import opened

        if (found := opened(event, args)) is not None:
            OPENED.setdefault(_running[-1], set()).add(found)


sys.addaudithook(_record_opens)


def run_stage(root: Path, stage: str, *extra: str, args: list[str] | None = None):
    """Run the DVC stage ``stage`` in this process as `dvc repro` runs it: its
    script's ``main`` with the command's arguments (and ``extra``), in ``root``;
    what it opens is recorded in ``OPENED`` (tests/test_stage_paths.py).
    ``args`` replaces the command's leading positional arguments (a run name or
    seed that is not in params.yaml, with that stage's paths)."""
    import importlib
    import os

    _python, script, *argv = stage_command(root, stage)
    if args is not None:
        first = next(i for i, a in enumerate(argv) if a.startswith("--"))
        argv = [*args, *argv[first:]]
    module = importlib.import_module(f"stages.{Path(script).stem}")
    here = os.getcwd()
    os.chdir(root)
    _running.append(stage)
    try:
        module.main([*argv, *extra])
    finally:
        _running.pop()
        os.chdir(here)


def untrained_project(root: Path) -> Path:
    """The tiny profile's params.yaml and dvc.yaml in ``root``, nothing trained:
    the query commands and `firth serve` answer from it up to where a model would
    load (or name the dvc target that trains it)."""
    shutil.copy(ROOT / "profiles" / "tiny.yaml", root / "params.yaml")
    shutil.copy(ROOT / "dvc.yaml", root / "dvc.yaml")
    return root
