"""moto patched where it differs from AWS (or is needlessly slow), wherever it stands in for AWS."""
