"""A request as sent: its JSON body → ordered blocks with the bytes the provider saw → tokens.

``_blocks`` cuts a body into blocks in the provider's cache order (``_jsonspan`` finds each
block's exact source span), ``_tokens`` tokenizes each distinct block once (``_encodings``
keeps tiktoken's ranks as a binary copy).
"""
