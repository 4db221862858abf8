"""Adapters: a WSGI app (wsgi), and a Lambda function or an SQS consumer (aws)."""
