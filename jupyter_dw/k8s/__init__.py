"""The only code that talks to Kubernetes: credentials, discovery, access checks, watch caches.

:class:`jupyter_dw.k8s.session.KubeSession` ties them together; the core's services use it.
API groups, versions and plurals live in :mod:`.resources`. Nothing is imported here, so
that ``jupyter_dw.k8s.errors`` stays light for code that only names errors.
"""
