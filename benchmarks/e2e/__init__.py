"""The end-to-end benchmark's parts: a generated cluster shaped like what a real API server serves
(``objects``), the fake API server (``benchmarks.sim.fakeapi``) as a process that streams watch events at a real
cluster's volume (``apiserver``), a bare keep-alive HTTP client (``loopback``), and what the bench reads of the
processes it starts (``processes``, ``profile``). Its kube-scheduler is the model in ``benchmarks.sim``, in real
time (``benchmarks.sim.kubescheduler.standin``). ``benchmarks.bench_e2e`` runs them.
"""
