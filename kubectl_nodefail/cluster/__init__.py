"""The cluster, the only I/O of the plugin: the kubeconfig and credentials (kubeconfig, credentials,
credplugin, proxy), the one HTTP client (kube, connection, paging, answers, netfail), what a
diagnosis reads (gather and its *_read modules), several contexts at once, and the dump written.
A new credential kind goes in credentials/credplugin; a new object to read, in gather's reads."""
