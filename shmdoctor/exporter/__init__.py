"""The Prometheus exporter's mechanism: what is known of the targets between scrapes (inventory), and one scrape
(collect). The metrics text is rendered by render/metrics.py; the command only wires them."""
