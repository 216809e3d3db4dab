import pytest
import yaml
from conftest import ROOT, run_stage

from firth.cli import all_sections
from firth.config import check_top_level, load_section, load_sources
from firth.errors import ConfigError

SCHEMAS = all_sections()
PROFILES = [
    *(ROOT / "profiles").glob("*.yaml"),
    *(ROOT / "profiles").glob("*/params.yaml"),
]


def write_params(tmp_path, mutate):
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    mutate(params)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    return path


def test_default_params_are_valid():
    check_top_level(ROOT / "params.yaml")
    for name in (
        "prepare_text",
        "prepare_parallel",
        "prepare_tagged",
        "subsample",
        "tokenizer",
        "report",
    ):
        load_section(name, ROOT / "params.yaml")
    for profile in PROFILES:
        check_top_level(profile)
        load_section("subsample", profile)


def test_unknown_key_names_key_and_allowed(tmp_path):
    path = write_params(tmp_path, lambda p: p["subsample"]["text"].update(max_tokens=5))
    with pytest.raises(ConfigError) as err:
        load_section("subsample", path)
    msg = str(err.value)
    assert "subsample.text.max_tokens" in msg and "max_train_tokens" in msg
    assert "\n" not in msg


def test_missing_and_mistyped_keys(tmp_path):
    path = write_params(tmp_path, lambda p: p["tokenizer"]["text"].pop("vocab_size"))
    with pytest.raises(ConfigError, match=r"missing key 'tokenizer.text.vocab_size'"):
        load_section("tokenizer", path)
    path = write_params(
        tmp_path, lambda p: p["subsample"]["text"].update(max_train_tokens="1e6")
    )
    with pytest.raises(ConfigError, match=r"subsample.text.max_train_tokens"):
        load_section("subsample", path)
    path = write_params(tmp_path, lambda p: p["tokenizer"]["text"].update(model="wp"))
    with pytest.raises(ConfigError, match=r"tokenizer.text.model.*byte-level"):
        load_section("tokenizer", path)


def test_unknown_section_and_source_group(tmp_path):
    path = write_params(tmp_path, lambda p: p.update(subsampel={}))
    with pytest.raises(ConfigError, match=r"unknown section 'subsampel'"):
        check_top_level(path)
    path = write_params(tmp_path, lambda p: p["sources"].update(txt={}))
    with pytest.raises(ConfigError, match=r"unknown key 'sources.txt'"):
        load_sources("text", path)


def test_stage_stops_with_one_line_and_writes_nothing(tmp_path, capsys):
    write_params(tmp_path, lambda p: p["subsample"]["text"].update(bogus=1))
    (tmp_path / "data" / "prepared").mkdir(parents=True)
    with pytest.raises(SystemExit) as exit_:
        run_stage(tmp_path, "subsample-text")
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "subsample.text.bogus" in err[0]
    assert not (tmp_path / "data" / "subsampled").exists()


def test_cli_check_params(tmp_path):
    from typer.testing import CliRunner

    from firth.cli import app

    runner = CliRunner()
    ok = runner.invoke(app, ["check-params", "--path", str(ROOT / "params.yaml")])
    assert ok.exit_code == 0, ok.output
    bad = write_params(tmp_path, lambda p: p["report"].update(colour="red"))
    result = runner.invoke(app, ["check-params", "--path", str(bad)])
    assert result.exit_code == 2 and "report.colour" in result.output
    assert "wikipedia-sample" in runner.invoke(app, ["sources"]).output


def test_seed_lists_are_checked(tmp_path):
    """Every embedding method has its own non-empty list of distinct seeds; the
    tagger and NLI matrices reject a repeated value."""
    for profile in (ROOT / "params.yaml", *PROFILES):
        for name in ("embeddings", "tagger", "nli", "evaluate_nli"):
            load_section(name, profile, schema=SCHEMAS[name])
    cases = [
        ("embeddings", lambda p: p["embeddings"]["seeds"].pop("glove"), "per method"),
        ("embeddings", lambda p: p["embeddings"]["seeds"].update(sgns=[]), "sgns"),
        ("embeddings", lambda p: p["embeddings"]["seeds"].update(sgns=[1, 1]), "sgns"),
        ("tagger", lambda p: p["tagger"].update(seeds=[13, 13]), "lists a value twice"),
        ("nli", lambda p: p["nli"].update(models=["pair", "premise"]), "nli.models"),
    ]
    for section, mutate, message in cases:
        path = write_params(tmp_path, mutate)
        with pytest.raises(ConfigError, match=message):
            load_section(section, path, schema=SCHEMAS[section])


def test_a_task_section_needs_its_schema():
    """A task's section is validated by the schema its task module defines; asking
    for it by name alone is an error that says so."""
    with pytest.raises(ConfigError, match="pass schema="):
        load_section("nmt", ROOT / "params.yaml")
    with pytest.raises(ConfigError, match="unknown section 'nmtt'.*evaluate_nmt"):
        load_section("nmtt", ROOT / "params.yaml")


def test_every_task_section_has_its_schema_in_the_cli():
    """check-params validates every section: the CLI's mapping names exactly the
    core sections and the task sections firth.config lists."""
    from firth.config import DOMAIN_SECTIONS, SECTIONS

    assert set(SCHEMAS) == set(SECTIONS) | set(DOMAIN_SECTIONS)


def test_the_transformer_may_keep_its_own_schedule():
    """nmt.transformer.lr / warmup / batch_tokens / decay replace nmt.common's
    for transformer runs only; unset, every run trains with nmt.common's."""
    from firth.config import load_sections
    from firth.nmt.config import Nmt, schedule

    cfg, _ = load_sections("nmt", ROOT / "params.yaml", schema=Nmt)

    def with_own(**own):
        unset = {"lr": None, "warmup": None, "batch_tokens": None, "decay": None}
        t = cfg.transformer.model_copy(update={**unset, **own})
        return cfg.model_copy(update={"transformer": t})

    unset = with_own()
    assert schedule(unset, "transformer") == cfg.common == schedule(unset, "none")
    lr_only = with_own(lr=1e-3)
    assert schedule(lr_only, "transformer").lr == 1e-3
    assert schedule(lr_only, "transformer").warmup == cfg.common.warmup
    assert schedule(with_own(lr=1e-3, warmup=0.1), "transformer").warmup == 0.1
    assert schedule(lr_only, "bahdanau") == cfg.common
    batch = with_own(batch_tokens=321)
    assert schedule(batch, "transformer").batch_tokens == 321
    assert schedule(batch, "transformer").lr == cfg.common.lr
    assert schedule(batch, "context").batch_tokens == cfg.common.batch_tokens
    inv = with_own(decay="inverse-sqrt")
    assert cfg.common.decay == "cosine"
    assert schedule(inv, "transformer").decay == "inverse-sqrt"
    assert schedule(inv, "bahdanau").decay == "cosine"


@pytest.mark.parametrize(
    "key, value, says",
    [
        (("probe", "lm_runs"), ["lstm", "lstm-big"], "not a run of lm.runs"),
        (("probe", "lm_runs"), ["kn5"], "no layers of states"),
        (("probe", "vectors"), ["sgns", "word2vec"], "not an embedding method"),
        (("tagger", "vectors"), "fasttext", "not an embedding method"),
        (("evaluate_attention", "runs"), ["bahdanau", "bahdanu"], "not a run of nmt"),
        (("evaluate_attention", "runs"), ["none"], "has no attention"),
    ],
)
def test_check_params_follows_names_across_sections(tmp_path, key, value, says):
    """A list that names runs or methods of another section is checked against
    it, naming the key and the entry (else the stage would fail only when run)."""
    from typer.testing import CliRunner

    from firth.cli import app

    bad = write_params(tmp_path, lambda p: p[key[0]].update({key[1]: value}))
    result = CliRunner().invoke(app, ["check-params", "--path", str(bad)])
    assert result.exit_code == 2, result.output
    assert ".".join(key) in result.output and says in result.output
    for profile in PROFILES:
        ok = CliRunner().invoke(app, ["check-params", "--path", str(profile)])
        assert ok.exit_code == 0, ok.output
