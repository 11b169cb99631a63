/** The absolute path of the extension file shipped in this package. */
export function getLoadablePath(): string;
/** Loads the extension into a better-sqlite3 Database. */
export function load(db: { loadExtension(path: string): unknown }): void;
