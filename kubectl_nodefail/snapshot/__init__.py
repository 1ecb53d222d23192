"""The picture the analysis reads: one snapshot of the cluster (model), its schema and check
(dumpschema, schemalang, schemas), dump files read as a stream (jsonstream), the API groups
of known kinds (kinds), and dataclasses as JSON data (data)."""
