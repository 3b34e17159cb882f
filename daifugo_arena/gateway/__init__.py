"""The gateway: holds the WebSocket connections of bots that dial out and relays their
requests and answers through Redis (:mod:`arena.relay`; docs/operations.md, "Gateways")."""
