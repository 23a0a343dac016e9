"""The boundary contracts: the kube-scheduler extender wire format, Grove's CRDs, the parts of Pod and Node a
scheduler reads, and the HTTP surface that routes extender verbs to an implementation handed in.

Owns: pydantic models, the verb router (bare ASGI) and the app factories (probes and debug on FastAPI). Does
not own: any decision. Imports none of our packages.
"""
