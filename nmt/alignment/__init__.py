"""Word alignment from attention: word links read in the exported graph and by clients,
guided alignment (attention supervised by given links) and attention heatmaps.

`word_links` needs NumPy only, so the clients and the server read links with it.
"""
