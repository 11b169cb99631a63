// sqlite-dedup for Node: the path of the prebuilt extension, for
// better-sqlite3's db.loadExtension() (or any client that loads extensions).
"use strict";
const fs = require("fs");
const path = require("path");

/** The absolute path of the extension file shipped in this package. */
function getLoadablePath() {
  const file = path.join(__dirname, "dedup0.so");
  if (!fs.existsSync(file)) {
    throw new Error(`sqlite-dedup: ${file} is missing (this package ships a linux-x64 build only)`);
  }
  return file;
}

/** Loads the extension into a better-sqlite3 Database (a TypeError names
 * anything else given, such as the database file's path). */
function load(db) {
  if (db === null || typeof db !== "object" || typeof db.loadExtension !== "function") {
    const got =
      typeof db === "string" ? `the string ${JSON.stringify(db)}`
      : db === null || db === undefined ? String(db)
      : typeof db === "object" ? "an object without loadExtension"
      : `the ${typeof db} ${String(db)}`;
    throw new TypeError(
      `sqlite-dedup: load(db) takes a better-sqlite3 Database (anything with loadExtension(path)), got ${got}` +
        ` (open the file first: new Database(path))`
    );
  }
  db.loadExtension(getLoadablePath());
}

module.exports = { getLoadablePath, load };
