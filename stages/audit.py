"""DVC stages audit-text, audit-parallel, audit-tagged@<name> and audit-nli@<name>:
contamination audits of an
evaluation set against every corpus its models could have seen, by n-gram overlap,
exact duplicates and MinHash near duplicates (firth.audit.overlap).

- ``parallel``: each translation test verse (data/subsampled/parallel/test.tsv),
  its source side against the training sources and its target side against the
  training targets.
- ``text``: each line of the language models' test text
  (data/subsampled/text/test.txt) against the training lines (train.txt).
- ``nli``: each test pair of data/raw/nli/<name>/examples.jsonl (premise and
  hypothesis joined by a space) against every pair of the other splits (training,
  and validation, which picks the epoch).
- ``tagged``: each test sentence of data/subsampled/tagged/<name>/ against
  the training sentences, and (n-gram overlap only: its lines are whole documents)
  against the text corpus the pretrained word vectors were trained on
  (data/subsampled/text/train.txt).

Writes data/audit/<kind>[/<name>]/flags.tsv (one row per test example, in test
order; dirty = any test against any corpus) and reports/audit/<kind>[_<name>].json
(counts, n, the most repeated dirty examples). The evaluation stages read the flags
and score the clean and dirty subsets."""

from __future__ import annotations

from firth import stage_cli
from firth.audit.config import AuditParams
from firth.audit.stage import KINDS, flag_rows, summary
from firth.config import load_sections
from firth.io import write_folder, write_json, write_rows


def body(args) -> None:
    cfg, _ = load_sections("audit", stage_cli.params_path(args), schema=AuditParams)
    audited = KINDS[args.kind](cfg, test=args.test, train=args.train, text=args.text)
    header, rows = flag_rows(audited)
    write_folder(
        args.out, lambda d: write_rows(d / "flags.tsv", header, rows, delimiter="\t")
    )
    write_json(args.summary, summary(audited, cfg, args.kind))


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("kind", choices=list(KINDS))
    stage_cli.path(p, "test", "the evaluation set (nli: the fetched source's folder)")
    stage_cli.path(p, "train", "the training set to check it against", required=False)
    stage_cli.path(p, "text", "tagged: the word vectors' training text", required=False)
    stage_cli.path(p, "out", "the folder of flags.tsv to write")
    stage_cli.path(p, "summary", "the audit's summary (JSON)")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
