"""How many floats a stored vector holds: 384, what all-MiniLM-L6-v2 gives.

A fact of the model that the schema needs too: the chunk and cache tables' vector columns
(rag/models, on the floor below the encoders) and every encoder (rag/embeddings, which checks
its model against it) read it here, so neither imports the other for a number. Changing it
means another model and a migration of both columns.
"""

EMBEDDING_DIM = 384
