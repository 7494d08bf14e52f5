// The parsed template: expressions and statements, built once by the parser and only read
// while rendering (renders on several threads share one tree).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "jinja/value.h"

namespace pagedgen::jinja {

// A filter: `input | name(args)`. A test: `input is name(args)`.
using FilterFunction = Value (*)(Interpreter&, const Value& input, CallArgs& args);
using TestFunction = bool (*)(Interpreter&, const Value& input, CallArgs& args);

enum class ExprKind {
  kLiteral,      // literal
  kName,         // name
  kList,         // children: items
  kTuple,        // children: items (a tuple is a list here)
  kDict,         // children: key, value, key, value, ...
  kAttribute,    // children[0].name
  kItem,         // children[0][children[1]]
  kSlice,        // children[0][children[1]:children[2]:children[3]], each bound may be null
  kUnary,        // name: "not", "-" or "+"; children[0]
  kBinary,       // name: the operator; children[0], children[1]
  kAnd,          // children[0] and children[1]
  kOr,           // children[0] or children[1]
  kCompare,      // children[0] ops[0] children[1] ops[1] children[2] ...
  kTest,         // children[0] is [not] name(children[1:], keywords)
  kFilter,       // children[0] | name(children[1:], keywords); children[0] null in a filter block
  kCall,         // children[0](children[1:], keywords)
  kConditional,  // children[0] if children[1] else children[2] (null: undefined)
};

struct Expr {
  ExprKind kind;
  int line;
  Value literal;
  std::string name;
  std::vector<std::unique_ptr<Expr>> children;
  std::vector<std::pair<std::string, std::unique_ptr<Expr>>> keywords;
  std::vector<std::string> ops;
  bool negated = false;             // `is not`
  FilterFunction filter = nullptr;  // resolved when parsed; null: unknown, fails when run
  TestFunction test = nullptr;
};
using ExprPtr = std::unique_ptr<Expr>;

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

struct Parameter {
  std::string name;
  ExprPtr default_value;  // may be null
};

struct TextStmt {
  std::string text;
};
struct OutputStmt {
  ExprPtr expr;
};
struct IfStmt {
  std::vector<std::pair<ExprPtr, Body>> branches;  // if, elif, ...
  Body else_body;
};
struct ForStmt {
  std::vector<std::string> targets;  // `for a, b in ...` unpacks
  ExprPtr iterable;
  ExprPtr condition;  // `for x in xs if cond`, may be null
  Body body;
  Body else_body;
};
struct SetStmt {
  std::vector<std::string> targets;
  std::string attribute;  // `set ns.attribute = ...`: targets[0] is the namespace
  ExprPtr value;          // null for a block set
  Body body;              // a block set's body
  ExprPtr filter;         // a block set's filters, may be null
};
struct MacroStmt {
  std::string name;
  std::vector<Parameter> parameters;
  Body body;
};
struct CallBlockStmt {
  ExprPtr call;
  std::vector<Parameter> parameters;  // caller's
  Body body;
};
struct FilterBlockStmt {
  ExprPtr filter;
  Body body;
};
struct WithStmt {
  std::vector<std::pair<std::string, ExprPtr>> assignments;
  Body body;
};
struct LoopControlStmt {
  bool is_break;
};

struct Stmt {
  int line;
  std::variant<TextStmt, OutputStmt, IfStmt, ForStmt, SetStmt, MacroStmt, CallBlockStmt, FilterBlockStmt, WithStmt,
               LoopControlStmt>
      node;
};

// The built-in filters and tests by name (null when there is none).
FilterFunction find_filter(std::string_view name);
TestFunction find_test(std::string_view name);

}  // namespace pagedgen::jinja
