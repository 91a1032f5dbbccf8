"""The optional compiled target: typed codec modules for mypyc, emitted beside the pure package.

``emit`` writes one ``_native_<module>.py`` per spec (classes, readers and writers in the fully typed
style mypyc compiles to fast C), ``build`` compiles them with mypyc in a temporary folder and places
only the extension modules into the package. The pure modules load them through ``_native_loader``.
"""
