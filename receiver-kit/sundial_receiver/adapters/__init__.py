"""Adapters: a WSGI app (wsgi), an ASGI app (asgi), and a Lambda function or an SQS consumer (aws)."""
