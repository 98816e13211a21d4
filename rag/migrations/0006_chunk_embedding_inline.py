"""Keep chunk vectors in the row, not in TOAST.

pgvector declares `vector` STORAGE EXTERNAL, so a 384-dimension vector (1.5 kB)
in a row with its text went out of line: an exact scan (small workspaces, narrow
filters) then read the TOAST table for every row it compared, 12 buffers a row.
MAIN keeps it inline unless the row cannot fit a page. Rows written before this
migration keep their out-of-line vectors until their document is re-indexed.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("rag", "0005_canonical_records_contradictions")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE rag_chunk ALTER COLUMN embedding SET STORAGE MAIN",
            reverse_sql="ALTER TABLE rag_chunk ALTER COLUMN embedding SET STORAGE EXTERNAL",
        ),
    ]
