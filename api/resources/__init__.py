"""One flask-smorest blueprint (with its schemas) per resource."""
