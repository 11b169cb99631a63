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

/** Loads the extension into a better-sqlite3 Database. */
function load(db) {
  db.loadExtension(getLoadablePath());
}

module.exports = { getLoadablePath, load };
