"""The exporter's default port, in a module of its own so the command line can name it without
importing the server.

9612 is marked free in Prometheus's list of default port allocations
(https://github.com/prometheus/prometheus/wiki/Default-port-allocations, exporters from 9100) as
read for this release; 9400, the earlier default, is NVIDIA dcgm-exporter's, which runs on nearly
every Kubernetes GPU node, so under host networking or on bare metal the two collided.
"""

DEFAULT_PORT = 9612
