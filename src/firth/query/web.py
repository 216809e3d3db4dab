"""`firth serve`: one local page that asks the trained models what the commands
ask (translate with the attention heatmap and, for a pointer run, each output
token's copy share; neighbours and analogies; language-model samples; tagged text
with its entity spans). A FastAPI app (served by uvicorn, bound to 127.0.0.1 by
default) over the same functions as the commands; the page is one HTML file with
plain JavaScript calling its JSON endpoints."""

from __future__ import annotations

from pathlib import Path

import yaml
from fastapi import FastAPI, HTTPException
from fastapi.responses import HTMLResponse
from pydantic import BaseModel

from firth.errors import FirthError
from firth.query import stage_paths

PAGE = Path(__file__).with_name("page.html")


class TranslateIn(BaseModel):
    run: str
    text: str
    beam: int | None = None


class WordsIn(BaseModel):
    method: str
    words: list[str]
    k: int = 10


class AnalogyIn(BaseModel):
    method: str
    a: str
    b: str
    c: str
    k: int = 5


class GenerateIn(BaseModel):
    run: str
    prompt: str
    samples: int = 3


class TagIn(BaseModel):
    run: str
    text: str


def runs(root: Path) -> dict:
    """Every run the page can ask, per task, with whether its outputs are there."""
    params = yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8"))
    seeds = params.get("embeddings", {}).get("seeds", {})
    tagger = params.get("tagger", {})

    def made(stage: str, name: str) -> bool:
        return (stage_paths(root, stage)["out"] / name).exists()

    return {
        "translate": {
            r: made(f"train-nmt@{r}", "model.pt")
            for r in params.get("nmt", {}).get("runs", {})
        },
        "embeddings": {
            m: made(f"train-embeddings-{m}@{s[0]}", "vectors.txt")
            for m, s in seeds.items()
            if s
        },
        "generate": {
            r: made(f"train-lm@{r}", "vocab.json")
            for r in params.get("lm", {}).get("runs", {})
        },
        "tag": {
            f"{d}-{h}": any(
                made(f"train-tagger@{d}-{h}-{s}", "config.json")
                for s in tagger.get("seeds", [])
            )
            for d in tagger.get("data", [])
            for h in tagger.get("heads", [])
        },
    }


def make_app(root: Path) -> FastAPI:
    from firth.query import embeddings, lm, tag, translate

    root = Path(root)
    params = root / "params.yaml"
    app = FastAPI(title="Firth: ask a trained model")

    def asked(fn):
        try:
            return fn()
        except FirthError as exc:
            raise HTTPException(status_code=400, detail=str(exc)) from None

    @app.get("/", response_class=HTMLResponse)
    def page() -> str:
        return PAGE.read_text(encoding="utf-8")

    @app.get("/api/runs")
    def list_runs() -> dict:
        return runs(root)

    @app.post("/api/translate")
    def do_translate(q: TranslateIn) -> list[dict]:
        lines = q.text.splitlines()
        return asked(
            lambda: translate.translate(
                root, params, q.run, lines, beam=q.beam, attention=True
            )
        )

    def folder(method: str):
        cfg = yaml.safe_load(params.read_text(encoding="utf-8"))
        return asked(lambda: embeddings.vectors_folder(root, cfg, method, None))

    @app.post("/api/neighbours")
    def do_neighbours(q: WordsIn) -> list[dict]:
        where = folder(q.method)
        return asked(lambda: embeddings.neighbours(where, q.words, k=q.k))

    @app.post("/api/analogy")
    def do_analogy(q: AnalogyIn) -> list:
        cfg = yaml.safe_load(params.read_text(encoding="utf-8"))
        restrict = int(cfg.get("evaluate_embeddings", {}).get("restrict", 0))
        where = folder(q.method)
        return asked(
            lambda: embeddings.analogy(where, q.a, q.b, q.c, k=q.k, restrict=restrict)
        )

    @app.post("/api/generate")
    def do_generate(q: GenerateIn) -> list[str]:
        return asked(
            lambda: lm.generate(root, params, q.run, q.prompt, samples=q.samples)
        )

    @app.post("/api/tag")
    def do_tag(q: TagIn) -> list[dict]:
        sentences = tag.read_input(q.text)
        tags, bio = asked(lambda: tag.tag(root, params, q.run, sentences))
        return [
            {
                "tokens": tokens,
                "tags": t,
                "spans": tag.spans(tokens, t) if bio else [],
            }
            for tokens, t in zip(sentences, tags, strict=True)
        ]

    return app
