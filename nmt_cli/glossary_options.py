"""The glossary flags of `nmt translate` and `nmt translate-file`: `--glossary FILE`,
`--glossary-id NAME` (a server's) and `--glossary-exact-case`, read the same way."""

from __future__ import annotations

import argparse


def add_glossary_arguments(parser: argparse.ArgumentParser, listing: str) -> None:
    """Adds the three flags; `listing` says where the terms applied are shown."""
    parser.add_argument("--glossary", metavar="FILE",
                        help="write these terms in the translations: a TSV (source<TAB>target) "
                             "or .csv file; an entry whose target is its source is not "
                             f"translated (docs/glossaries.md); with --server the server "
                             f"applies it; {listing}")
    parser.add_argument("--glossary-id", metavar="NAME",
                        help="with --server: a glossary of the server (nmt serve --glossaries), "
                             "by name; with --glossary too, the file's entries take precedence")
    parser.add_argument("--glossary-exact-case", action="store_true",
                        help="apply the glossary's terms only where written in the same case")


def read_glossary_option(args: argparse.Namespace):
    """The `--glossary` file read (None without one); refused whole if a row is bad."""
    if args.glossary_id is not None and not args.server:
        raise ValueError("--glossary-id names a glossary of a server: add --server HOST:PORT, "
                         "or give the file itself with --glossary FILE")
    if args.glossary is None:
        if args.glossary_exact_case and args.glossary_id is None:
            raise ValueError("--glossary-exact-case goes with --glossary FILE (or --glossary-id)")
        return None
    from documents.glossary import Glossary

    return Glossary.read(args.glossary, exact_case=args.glossary_exact_case)


def server_glossary(args: argparse.Namespace, glossary) -> dict:
    """The client's `glossary=` arguments for `--glossary FILE` and `--glossary-id NAME`
    (the server applies them); {} for neither."""
    if glossary is None and args.glossary_id is None:
        return {}
    if args.glossary_id is None:
        return {"glossary": glossary}
    from nmt_api.convert import glossary_to_proto

    message = glossary_to_proto(glossary or (), args.glossary_exact_case)
    message.glossary_id = args.glossary_id
    return {"glossary": message}
