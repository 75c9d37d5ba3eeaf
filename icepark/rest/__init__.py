"""The Iceberg REST catalog protocol: the request and response models (:mod:`.models`) that
icepark's client and server share."""
