"""The sidebar panel: its static files, its websocket commands and the recent activity it shows."""
