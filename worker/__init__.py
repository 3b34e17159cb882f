"""Celery worker side of Daifugo Arena: match-running tasks (see worker.celery_app)."""
