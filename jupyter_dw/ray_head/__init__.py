"""The only code that talks to a Ray head: its Jobs REST API (:mod:`.jobs_api`) and its log
stream (:mod:`.log_tail`), over HTTP and WebSocket. Ray itself is never imported here: these
work in a kernel without Ray installed. The token goes into request headers, nowhere else.
"""
