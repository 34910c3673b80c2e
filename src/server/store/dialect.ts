/** The two databases the store runs on; each migration and query that differs asks which. */
export type Dialect = 'sqlite' | 'postgres';
