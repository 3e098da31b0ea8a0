# jupyter_dw settings for a workbench image: copy this file to a directory on the Jupyter
# config path (`jupyter --paths`, e.g. /opt/app-root/etc/jupyter/ or /etc/jupyter/) as
# jupyter_server_config.py, or merge its lines into the one the image already has.
#
# The server extension reads the `JupyterDW` section; kernels read the same file (and the
# JUPYTER_DW_* environment variables, which win over it), so notebooks get the same defaults
# and limits. Every setting is described in the docs' configuration
# reference (docs/reference/configuration.md).
# `jupyter dw doctor` shows what these settings let the workbench do on the cluster.

c = get_config()  # noqa: F821 - provided by traitlets when it loads this file

# -- where Kubernetes is ----------------------------------------------------------------------
# In a pod the service account's namespace is used; set one to show another.
# c.JupyterDW.namespace = "team-a"
c.JupyterDW.request_timeout = 30.0
# Re-check permissions and installed APIs (a Role granted later, Kueue installed later).
c.JupyterDW.access_refresh_interval = 60.0
# Re-open a watch that stayed silent this long (bookmarks come about once a minute).
c.JupyterDW.watch_idle_timeout = 180.0

# -- what a new Ray cluster gets when the request does not say ---------------------------------
c.JupyterDW.default_image = "quay.io/modh/ray:2.52.1-py311-cu121"
c.JupyterDW.default_workers = 2
c.JupyterDW.default_head_cpu = "2"
c.JupyterDW.default_head_memory = "8Gi"
c.JupyterDW.default_worker_cpu = "4"
c.JupyterDW.default_worker_memory = "16Gi"
c.JupyterDW.default_worker_gpu = 0

# -- what a data scientist may ask for at most (beyond what the queue's quota allows) ----------
c.JupyterDW.max_workers = 16
c.JupyterDW.max_worker_cpu = "16"
c.JupyterDW.max_worker_memory = "64Gi"
c.JupyterDW.max_worker_gpu = 4
c.JupyterDW.max_head_cpu = "8"
c.JupyterDW.max_head_memory = "32Gi"
# Prefixes, or fnmatch patterns; the default image must be allowed.
c.JupyterDW.allowed_images = ["quay.io/modh/ray:", "quay.io/my-team/ray-*"]

# Ray's own authentication: "token" (the default; Ray 2.52 or newer), "k8s" (Kubernetes tokens,
# Ray 2.55 or newer) or "disabled" (every cluster then shows a warning).
c.JupyterDW.ray_auth = "token"

# Only when Kueue runs with the ElasticJobsViaWorkloadSlices feature gate.
c.JupyterDW.elastic_jobs = False

# -- the Ray dashboard proxy (server only) -----------------------------------------------------
# KubeRay's head Service by its cluster DNS name (the default); change it for another
# cluster domain or a gateway.
c.JupyterDW.ray_dashboard_url = "http://{name}-head-svc.{namespace}.svc:{port}"
c.JupyterDW.ray_dashboard_port = 8265
