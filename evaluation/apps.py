from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    """No models: an app so that Django finds the `eval_demo` and `eval_answers` commands."""

    name = "evaluation"
    verbose_name = "Evaluation"
