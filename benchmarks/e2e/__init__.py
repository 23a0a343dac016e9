"""The end-to-end benchmark's parts: a generated cluster shaped like what a real API server serves
(``objects``), a fake API server process that streams watch events at a real cluster's volume (``apiserver``),
a bare keep-alive HTTP client (``loopback``) and a kube-scheduler stand-in (``standin``). ``benchmarks.bench_e2e``
runs them; nothing else imports them.
"""
