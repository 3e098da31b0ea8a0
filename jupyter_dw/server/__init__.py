"""The server surface: the jupyter_server extension app, REST handlers, events socket and
Ray dashboard proxy. Only this package imports jupyter_server and tornado."""
