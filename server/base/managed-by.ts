/** The label the gateway puts on the objects it writes (its PolicyReports, its certificate Secret), and its value. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'admission-gateway';
