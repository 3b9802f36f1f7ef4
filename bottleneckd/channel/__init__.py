"""The hook <-> sidecar link on one host: the datagram channel that carries the hook's step reports
and events to the sidecar (``link.py``), where its socket may live (``socket_path.py``) and the
report file the sidecar keeps beside it for the hook's epoch-end block (``report_file.py``).

Both ends import it: the daemon (``runtime/``, ``cli/``) and the hook (``torch/transport.py``). It
imports only ``model/`` and never torch."""
