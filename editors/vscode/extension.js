// Starts `benchlang lsp` over stdio for .bench files (settings: benchlang.lsp.*).
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const config = vscode.workspace.getConfiguration("benchlang");
  if (!config.get("lsp.enabled", true)) {
    return;
  }
  const server = {
    command: config.get("lsp.command", "benchlang"),
    args: config.get("lsp.args", ["lsp"]),
  };
  client = new LanguageClient(
    "benchlang",
    "benchlang",
    { run: server, debug: server },
    { documentSelector: [{ scheme: "file", language: "benchlang" }] }
  );
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
