"""Result rows as text and files written atomically."""
