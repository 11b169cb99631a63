// Runs an SQL script on a database through better-sqlite3's exec(), as a
// Node user would: node host.js DB SCRIPT EXTENSION [--readonly]
// Prints "Error: <message>" and exits 1 when the script fails.
const fs = require("fs");
const Database = require("better-sqlite3");

const [db, script, extension] = process.argv.slice(2);
const readonly = process.argv.includes("--readonly");
let conn;
try {
  conn = new Database(db, { readonly, fileMustExist: true });
  conn.loadExtension(extension);
  conn.exec(fs.readFileSync(script, "utf8"));
} catch (e) {
  console.error("Error: " + e.message);
  process.exit(1);
}
