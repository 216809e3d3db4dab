"""What a question to a trained model may ask, defined once for every entry point:
the query commands' options (`firth translate --beam`, `neighbours -k`, `generate
--samples/--tokens/--temperature`), `firth serve`'s JSON API and its `--beam`,
`-k`, `--samples` caps, and the params that set their defaults
(``evaluate_nmt.beam``, ``evaluate_lm.sample_tokens/temperature``), which
`firth check-params` validates with these same types. A bad value gets the same
words everywhere: pydantic's message for the range, with the option, field or
key in front (``check``).

The ceilings are what one machine can answer in seconds to minutes (a beam of 64
over a 4,000-character line is minutes on 2 cores); `firth serve` narrows them
further per request (firth.query.web.Limits)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, TypeAdapter, ValidationError

MAX_BEAM = 64
MAX_K = 10_000
MAX_SAMPLES = 1_000
MAX_TOKENS = 10_000
MAX_TEMPERATURE = 100.0

Beam = Annotated[int, Field(ge=1, le=MAX_BEAM, description="beam width")]
K = Annotated[int, Field(ge=1, le=MAX_K, description="neighbours or answers")]
Samples = Annotated[int, Field(ge=1, le=MAX_SAMPLES, description="samples")]
Tokens = Annotated[int, Field(ge=1, le=MAX_TOKENS, description="tokens per sample")]
Temperature = Annotated[
    float,
    Field(gt=0, le=MAX_TEMPERATURE, allow_inf_nan=False, description="temperature"),
]
Chars = Annotated[int, Field(ge=1, description="characters of text")]


def check(kind: Any, value: Any, name: str) -> Any:
    """``value`` validated as ``kind`` (one of the types above), or ValueError with
    one line naming ``name``, what was expected and what was given."""
    try:
        return TypeAdapter(kind).validate_python(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ValueError(f"{name}: {err['msg']} (got {value!r})") from None
