#!/usr/bin/env python3
"""Do copies of a document in another format join its version family? Indexes a corpus and its
conversion (demo/real/convert_formats.py) into one workspace and counts, for every converted
file, whether it landed in the family of its source (or was recognised as its copy).

    DATA_DIR=var/scale-hash EMBEDDING_ENCODER=hashing \\
        python demo/real/cross_format_families.py --corpus var/real-corpus/corpus \\
        --converted var/real-formats/docx/corpus --workspace real-mixed-docx
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--converted", type=Path, required=True)
    parser.add_argument("--workspace", default="real-mixed")
    parser.add_argument("--count-only", action="store_true", help="count the workspace a previous run indexed")
    args = parser.parse_args()

    import django

    from config.embedded import services_start

    services_start()
    django.setup()  # the models can be imported only after this
    from django.core.management import CommandError, call_command

    from rag.models import Document

    call_command("migrate", interactive=False, verbosity=0)
    with tempfile.TemporaryDirectory() as folder:
        mixed = Path(folder) / "mixed"
        shutil.copytree(args.corpus, mixed / "source", copy_function=shutil.copy2)
        shutil.copytree(args.converted, mixed / "converted", copy_function=shutil.copy2)
        try:
            if not args.count_only:
                call_command("ingest", str(mixed), workspace=args.workspace, sync=True, create_workspace=True,
                             verbosity=0)
        except CommandError as error:  # a file without text fails; the others are still counted
            print(f"ingest: {error}")
    documents = {document.path.split("/mixed/", 1)[1]: document
                 for document in Document.objects.filter(workspace__slug=args.workspace).select_related("copy_of")}
    sources = {Path(path).stem: document for path, document in documents.items() if path.startswith("source/")}
    joined = copies = alone = missing = 0
    for path, document in documents.items():
        if not path.startswith("converted/"):
            continue
        source = sources.get(Path(path).stem)
        if source is None or source.status != "indexed" or document.status != "indexed":
            missing += 1
        elif document.copy_of_id == source.pk or source.copy_of_id == document.pk:
            copies += 1
        elif document.family_id is not None and document.family_id == source.family_id:
            joined += 1
        else:
            alone += 1
    total = joined + copies + alone
    print(f"{total} converted files with an indexed source: {copies} recognised as copies of it, {joined} in its "
          f"family, {alone} apart ({(copies + joined) / max(total, 1):.3f} found); {missing} without both indexed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
