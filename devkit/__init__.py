"""What tests, benchmarks and demo share: fault injection, scan images, an S3 server, a fake LLM server,
synthetic and format corpora, the query-analysis oracle.

A floor of its own, above the apps and below the scripts and the test suite: it may import anything of
config, rag, chat, licensing and evaluation, while none of those imports it, and it imports nothing of tests/.
"""
