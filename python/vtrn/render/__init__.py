"""Presentation of vtrn's models. ``units``: bytes and seconds as people read them."""
