"""`make eval`: the retrieval and answer evaluation harness, out of the request path.

- `retrieval.py`: measures of a ranked result list per question kind, the configurations compared;
- `answers.py`: answer accuracy, citation, abstention and length per configuration;
- `doctypes.py`: doc-type classification against the corpus's truth;
- `inputs.py`: what every evaluation command reads (corpus, questions, releases);
- `management/commands/`: `eval_demo` (retrieval) and `eval_answers` (answers).
"""
