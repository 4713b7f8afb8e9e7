"""Repository tools that are not part of the product (docs generation)."""
