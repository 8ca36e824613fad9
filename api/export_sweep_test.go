package api

// IsPublicRoute reports whether authenticate lets requests to route through without a
// token (its publicPaths and the dashboard's static files), for the route sweep.
func IsPublicRoute(route string) bool {
	return isPublic(route)
}

// TestKubeconfig is crud_test's kubeconfig, for the route sweep's seeded cluster.
const TestKubeconfig = testKubeconfig
