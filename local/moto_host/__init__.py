"""What runs in the process that hosts moto for the local runtime (the patches it applies to moto
are local/moto_patches/).

* ``process``: the process itself, ``python -m local.moto_host.process``: applies every patch,
  then serves moto; tests/integration/test_moto_early.py starts it early and configures it later.
* ``front``: a lean HTTP/1.1 front instead of werkzeug's server, DynamoDB answered without
  Flask; tests/integration/test_moto_front.py compares its answers with werkzeug's.
* ``gc``: the process's garbage collected in steps (no long pause of a full collection);
  tests/integration/test_moto_gc.py.
* ``persist``: moto's state snapshotted into a data folder and loaded at the next start;
  tests/integration/test_moto_persist.py.
* ``journal``: every answered write kept between two snapshots and replayed at a start;
  tests/integration/test_moto_journal.py.

The runtime's side of that process, which starts it and calls it (``MotoServer``,
``EarlyMoto``), is local/moto_server.py, beside the runtime that uses it: this package reads
local.settings, which (through local.faults) reaches the runtime's advance, and the advance calls
moto through local/moto_server.py; inside this package the two would make an import cycle.
"""
