"""A real Kubernetes control plane on loopback, for the end-to-end tests (``tests/e2e``) and ``bench_e2e --real``.

What it owns: starting etcd and kube-apiserver (authentication by tokens, RBAC on, service-account tokens),
installing the ``standalone`` overlay as a user would (``kubectl apply -k``, ``grove-extender certs --apply``:
``install``), fake GPU nodes with real topology labels, a kubelet stand-in that runs bound pods (init containers
included, with the token their pod mounts), tokens from the TokenRequest API, and running ``grove-extender serve``,
``grove-extender reconcile`` and kube-scheduler as their installed ServiceAccounts, from the Deployments and
ConfigMaps the API server holds (``components``). Every process it starts is stopped by PID, also
when a test fails, and its log is kept in the control plane's folder.

What it does not own: the binaries. They come from the folder named by ``KUBEBUILDER_ASSETS`` (envtest's
convention: ``etcd``, ``kube-apiserver``, ``kube-scheduler``, ``kubectl``); ``assets.find_assets`` says what is
missing. There is no kube-controller-manager: no garbage collector, no namespace, ServiceAccount or token
controller, no HPA controller (``cluster`` does the little of their work the tests need, and says so where it does:
the garbage collector and token controller stand-ins, ``collector`` and ``token_controller``). No DRA driver either:
``dra_driver`` serves its ComputeDomain CRD when a scenario asks, nothing more.

The product is driven only through its CLI and the Kubernetes API; nothing here imports ``scheduler`` internals
or ``tests``.
"""
