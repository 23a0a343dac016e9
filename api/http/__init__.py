"""Serving kube-scheduler's extender verbs over HTTP: the apps (the verb router, the probes, the debug port), reading
request bodies within bounds, the listeners (uvicorn for HTTP/1.1, our own HTTP/2 protocol over h2), their TLS and the
bounds every slow or greedy client meets.

Owns: the wire between kube-scheduler and an ``api.service.Extender``, and every use of the HTTP libraries (uvicorn,
h2, hpack, hyperframe) and of the event loop's TLS; every reach into their internals is in ``api.http.fences``, one
module per library, and nowhere else. Does not own: any decision (the extender handed in makes them), nor the models
it decodes and encodes (``api``'s other modules, which never import this package). Imports none of our packages
beyond ``api``.
"""
