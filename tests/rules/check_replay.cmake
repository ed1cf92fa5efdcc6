# Replays one trace file through a rule pack and checks the scores of the
# replay's --json summary (its last line of output) against thresholds.
#
#   cmake -DTASKLEDGER=<cli> -DTRACE=<file.jsonl> -DRULES=<pack dir>
#         [-DMIN_ALLOWED_PERCENT=N] [-DMIN_DENIED_PERCENT=N] [-DMIN_RIGHT_RULE_PERCENT=N]
#         [-DMAX_POLICY_ERRORS=N] -P check_replay.cmake
#
# Each given threshold also requires that the trace labels at least one call
# of that kind, so an empty or unreadable trace cannot pass. With
# MIN_ALLOWED_PERCENT=100 the replay must also exit 0 (no mismatch at all).
# Exit code 1 of a replay only says that some labeled call mismatched, which
# the percentage thresholds allow; any other non-zero exit fails the check.
cmake_minimum_required(VERSION 3.25)

foreach(required TASKLEDGER TRACE RULES)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "check_replay: -D${required}=... is required")
  endif()
endforeach()

execute_process(
  COMMAND ${TASKLEDGER} replay ${TRACE} --rules ${RULES} --json
  RESULT_VARIABLE exit_code
  OUTPUT_VARIABLE output
  ERROR_VARIABLE errors)
if(NOT exit_code EQUAL 0 AND NOT exit_code EQUAL 1)
  message(FATAL_ERROR "check_replay: replay of ${TRACE} exited with ${exit_code}:\n${errors}")
endif()

# The summary is the last non-empty line of stdout.
string(STRIP "${output}" output)
string(REGEX REPLACE "^.*\n" "" summary "${output}")
string(JSON failed_conversations ERROR_VARIABLE json_error GET "${summary}" failed_conversations)
if(json_error)
  message(FATAL_ERROR "check_replay: no JSON summary on the last line of the replay:\n${summary}")
endif()
if(NOT failed_conversations EQUAL 0)
  message(FATAL_ERROR "check_replay: ${failed_conversations} conversations of ${TRACE} could not be replayed")
endif()

foreach(field conversations calls expected_allow allowed_as_expected expected_deny
              denied_as_expected right_rule policy_errors)
  string(JSON ${field} GET "${summary}" ${field})
endforeach()
message(STATUS "${TRACE}: ${conversations} conversations, ${calls} calls; "
               "allowed ${allowed_as_expected}/${expected_allow}, "
               "denied ${denied_as_expected}/${expected_deny}, "
               "right rule ${right_rule}/${expected_deny}")

# Fails unless part * 100 >= percent * whole (and whole > 0).
function(require_share what part whole percent)
  if(whole EQUAL 0)
    message(FATAL_ERROR "check_replay: ${TRACE} labels no call to check ${what} on")
  endif()
  math(EXPR scaled_part "${part} * 100")
  math(EXPR scaled_whole "${percent} * ${whole}")
  if(scaled_part LESS scaled_whole)
    message(FATAL_ERROR "check_replay: ${what}: ${part} of ${whole}, below ${percent}%")
  endif()
endfunction()

if(DEFINED MIN_ALLOWED_PERCENT)
  require_share("allowed as expected" ${allowed_as_expected} ${expected_allow} ${MIN_ALLOWED_PERCENT})
  if(MIN_ALLOWED_PERCENT EQUAL 100 AND NOT exit_code EQUAL 0)
    message(FATAL_ERROR "check_replay: replay of ${TRACE} reported mismatches (exit ${exit_code}):\n${summary}")
  endif()
endif()
if(DEFINED MIN_DENIED_PERCENT)
  require_share("denied as expected" ${denied_as_expected} ${expected_deny} ${MIN_DENIED_PERCENT})
endif()
if(DEFINED MIN_RIGHT_RULE_PERCENT)
  require_share("denied by the labeled rule" ${right_rule} ${expected_deny} ${MIN_RIGHT_RULE_PERCENT})
endif()
if(DEFINED MAX_POLICY_ERRORS AND policy_errors GREATER MAX_POLICY_ERRORS)
  message(FATAL_ERROR "check_replay: ${policy_errors} policy errors in ${TRACE}, at most ${MAX_POLICY_ERRORS} allowed")
endif()
