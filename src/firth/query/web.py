"""`firth serve`: one local page that asks the trained models what the commands
ask (translate with the attention heatmap and, for a pointer run, each output
token's copy share; neighbours and analogies; language-model samples; tagged text
with its entity spans). A FastAPI app (served by uvicorn, bound to 127.0.0.1 by
default) over the same functions as the commands; the page is one HTML file with
plain JavaScript calling its JSON endpoints."""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.trustedhost import TrustedHostMiddleware
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from firth.config import read_params
from firth.errors import FirthError
from firth.limits import Beam, Chars, K, Samples, Temperature, Tokens
from firth.query import stage_paths
from firth.query.workers import Busy, OverTime, Pool, WorkerFailed

PAGE = Path(__file__).with_name("page.html")


class Limits(BaseModel):
    """What one request may ask of `firth serve`, each a `firth serve` option:
    the body's size, the characters of its text, the beam, k, samples and tokens
    it may ask for (within firth.limits' ranges, which the commands share), the
    seconds one request may compute (then its worker process is killed: 503),
    how many requests compute at once (one worker process each; the rest wait up
    to ``wait_seconds``, then get 503), and the Host names it answers (any other
    gets 400: a page elsewhere cannot reach the API by DNS rebinding)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    body_bytes: int = Field(65_536, ge=1_024)
    chars: Chars = 4_000
    beam: Beam = 16
    k: K = 100
    samples: Samples = 10
    tokens: Tokens = 200
    seconds: float = Field(30.0, gt=0, allow_inf_nan=False)
    concurrent: int = Field(2, ge=1)
    wait_seconds: float = Field(10.0, ge=0, allow_inf_nan=False)
    hosts: tuple[str, ...] = ("127.0.0.1", "localhost")


def _text(value: str) -> str:
    """A string that is valid Unicode (JSON can carry a lone surrogate such as
    "\\ud800", which no model and no reply can encode)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"not valid Unicode at character {exc.start}") from None
    return value


Text = Annotated[str, AfterValidator(_text)]
Name = Annotated[str, Field(min_length=1, max_length=100), AfterValidator(_text)]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TranslateIn(_In):
    run: Name
    text: Text
    beam: Beam | None = None


class WordsIn(_In):
    method: Name
    words: list[Annotated[str, Field(min_length=1, max_length=100)]] = Field(
        max_length=100
    )
    k: K = 10


class AnalogyIn(_In):
    method: Name
    a: Name
    b: Name
    c: Name
    k: K = 5


class GenerateIn(_In):
    run: Name
    prompt: Text
    samples: Samples = 3
    tokens: Tokens | None = None
    temperature: Temperature | None = None


class TagIn(_In):
    run: Name
    text: Text


def check(limits: Limits, q: BaseModel) -> None:
    """The request's values within ``limits`` (422 naming the field and the
    allowed range otherwise)."""
    bounds = {
        "text": limits.chars,
        "prompt": limits.chars,
        "beam": limits.beam,
        "k": limits.k,
        "samples": limits.samples,
        "tokens": limits.tokens,
    }
    for field, most in bounds.items():
        value = getattr(q, field, None)
        if value is None:
            continue
        size = len(value) if isinstance(value, str) else value
        if size > most:
            what = "characters" if isinstance(value, str) else "at most"
            raise HTTPException(
                status_code=422,
                detail=f"{field}: {size} is over this server's limit "
                f"({what} {most}; `firth serve --{field_option(field)}`)",
            )


def field_option(field: str) -> str:
    return "chars" if field in ("text", "prompt") else field


def scrubbed(message: str, root: Path) -> str:
    """``message`` without the server's absolute paths: the project folder as
    ".", so a reply says which file without where the server keeps it."""
    for where in {str(root.resolve()), str(root.absolute())}:
        message = message.replace(where + "/", "").replace(where, ".")
    return message


def runs(root: Path) -> dict:
    """Every run the page can ask, per task, with whether its outputs are there."""
    params = read_params(root / "params.yaml")
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


def make_app(root: Path, limits: Limits | None = None) -> FastAPI:
    """The page and its JSON API over the project ``root``, within ``limits``:
    no /docs (nothing loads from elsewhere), no absolute path or traceback in
    any reply. The models answer in ``limits.concurrent`` worker processes
    (firth.query.workers), so a request over ``limits.seconds`` is stopped."""
    root = Path(root)
    limits = limits or Limits()
    params = root / "params.yaml"
    pool = Pool(limits.concurrent, limits.seconds)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await pool.start()
        yield
        pool.close()

    app = FastAPI(
        title="Firth: ask a trained model",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
    )
    app.state.pool = pool
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(limits.hosts))

    @app.middleware("http")
    async def bounded(request: Request, call_next):
        """Refuse a body over ``limits.body_bytes`` (413) before reading it (a
        POST must say its length: 411)."""
        size = request.headers.get("content-length")
        if request.method == "POST" and not (size or "").isdigit():
            return JSONResponse(
                {"detail": "a POST needs its Content-Length"}, status_code=411
            )
        if size is not None and size.isdigit() and int(size) > limits.body_bytes:
            return JSONResponse(
                {"detail": f"request body over {limits.body_bytes} bytes"},
                status_code=413,
            )
        return await call_next(request)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"] if x != "body") or "body"
        return JSONResponse({"detail": f"{where}: {err['msg']}"}, status_code=422)

    @app.exception_handler(Exception)
    async def failed(request: Request, exc: Exception):
        # never a traceback or a server path in a reply (the log has them)
        return JSONResponse(
            {"detail": f"internal error ({type(exc).__name__})"}, status_code=500
        )

    def refused(exc: FirthError) -> HTTPException:
        """A FirthError (an unknown run, one not trained yet, an unreadable
        params.yaml) as a 400 naming it, without the server's paths."""
        return HTTPException(status_code=400, detail=scrubbed(str(exc), root))

    def asked(fn):
        try:
            return fn()
        except FirthError as exc:
            raise refused(exc) from None

    async def ask(target: str, *args, **kwargs):
        """``firth.query.<target>`` in a worker, within the time budget."""
        try:
            return await pool.ask(
                f"firth.query.{target}", *args, wait=limits.wait_seconds, **kwargs
            )
        except FirthError as exc:
            raise refused(exc) from None
        except Busy:
            raise HTTPException(
                status_code=503,
                detail=f"busy: {limits.concurrent} requests computing "
                f"(`firth serve --concurrent`)",
            ) from None
        except OverTime:
            raise HTTPException(
                status_code=503,
                detail=f"over this server's time budget of {limits.seconds:g} s "
                "per request (`firth serve --seconds`); its computation was stopped",
            ) from None
        except WorkerFailed as exc:
            raise HTTPException(
                status_code=500, detail=f"internal error ({exc})"
            ) from None

    @app.get("/", response_class=HTMLResponse)
    def page() -> str:
        return PAGE.read_text(encoding="utf-8")

    @app.get("/api/runs")
    def list_runs() -> dict:
        return asked(lambda: runs(root))

    @app.post("/api/translate")
    async def do_translate(q: TranslateIn) -> list[dict]:
        check(limits, q)
        lines = q.text.splitlines()
        return await ask(
            "translate:translate",
            root,
            params,
            q.run,
            lines,
            beam=q.beam,
            attention=True,
        )

    def vectors(method: str) -> tuple[Path, dict]:
        """The method's first-seed vectors folder and the params (an unreadable
        params.yaml is a 400 naming it, as for the commands)."""
        from firth.query import embeddings

        cfg = asked(lambda: read_params(params))
        return asked(lambda: embeddings.vectors_folder(root, cfg, method, None)), cfg

    @app.post("/api/neighbours")
    async def do_neighbours(q: WordsIn) -> list[dict]:
        check(limits, q)
        where, _ = vectors(q.method)
        return await ask("embeddings:neighbours", where, q.words, k=q.k)

    @app.post("/api/analogy")
    async def do_analogy(q: AnalogyIn) -> list:
        check(limits, q)
        where, cfg = vectors(q.method)
        restrict = int(cfg.get("evaluate_embeddings", {}).get("restrict", 0))
        return await ask(
            "embeddings:analogy", where, q.a, q.b, q.c, k=q.k, restrict=restrict
        )

    @app.post("/api/generate")
    async def do_generate(q: GenerateIn) -> list[str]:
        check(limits, q)
        return await ask(
            "lm:generate",
            root,
            params,
            q.run,
            q.prompt,
            samples=q.samples,
            tokens=q.tokens,
            temperature=q.temperature,
        )

    @app.post("/api/tag")
    async def do_tag(q: TagIn) -> list[dict]:
        from firth.query import tag

        check(limits, q)
        sentences = tag.read_input(q.text)
        tags, bio = await ask("tag:tag", root, params, q.run, sentences)
        return [
            {
                "tokens": tokens,
                "tags": t,
                "spans": tag.spans(tokens, t) if bio else [],
            }
            for tokens, t in zip(sentences, tags, strict=True)
        ]

    return app
