"""moto patched where it differs from AWS in a way Sundial relies on, or is needlessly slow.

Each module changes moto's own classes in place, by one or more ``make_*`` functions. They are
applied wherever moto stands in for AWS: by the local runtime's moto process
(local/moto_host/process.py, every patch) and by the suites (tests/conftest.py, all but
``clock``, ``resources``, ``dispatch``'s backend cache and ``sqs``'s throttled sends, which only
the runtime's moto process needs). Each is held to moto's own answer, or to AWS's, by the tests named
here (``fidelity`` is tests/integration/test_moto_fidelity.py).

What AWS does that moto did not:

* ``atomic``: DynamoDB's conditional writes are atomic, ReturnValues answer the request's own
  write and a read sees an item as one write left it (one lock for DynamoDB's requests);
  fidelity's ``test_an_update_answers_the_item_as_its_own_write_left_it_while_others_write_it``
  and ``test_a_read_sees_an_update_whole_or_not_at_all``.
* ``index_lag``: a global secondary index is eventually consistent (a Query of it leaves out
  what was written less than the lag ago; off unless set); fidelity's
  ``test_an_index_query_sees_a_write_only_after_the_lag_while_the_table_sees_it_at_once`` and
  tests/integration/test_list_consistency.py.
* ``read_lag``: a GetItem without ``ConsistentRead`` may answer the item as it was before a
  recent write (off unless set); fidelity's
  ``test_an_eventually_consistent_read_may_miss_a_recent_write_and_a_strongly_consistent_one_never``
  and ``test_a_lagging_write_copies_and_records_the_item_it_replaces_inside_the_writes_lock``,
  and tests/integration/test_pipeline_store_contract.py run under it.
* ``numbers``: DynamoDB refuses a Number attribute whose text is not a number
  (``ValidationException``); fidelity's ``test_a_number_that_does_not_parse_is_refused_as_dynamodb_refuses_it``.
* ``sqs``: a long poll returns as soon as a message becomes receivable; a SendMessageBatch
  entry keeps its ``AWSTraceHeader``; a send past the queue's rate is refused as throttled (a
  fault a test asks for by a tag); a receive does not fail while a delete changes the messages
  in flight, nor a CreateQueue while another looks for its dead-letter queue; plus the
  speed-ups below. Fidelity's ``test_a_long_poll_*``,
  ``test_a_receive_reads_the_pending_groups_from_a_copy_of_the_messages_in_flight`` and
  ``test_a_queue_created_while_another_creation_looks_for_its_dead_letter_queue_leaves_both_made``,
  tests/integration/test_loop_detection.py's
  ``test_moto_keeps_a_batch_entrys_trace_header_as_sqs_does`` and tests/e2e/test_eventbridge_api.py's
  ``test_a_throttled_target_is_retried_then_dead_lettered_with_the_exhausted_condition``.
* ``query``: a Query reads only the items its key condition selects (its page counts those),
  and a table's partition without sorting the whole table; fidelity's
  ``test_a_query_reads_its_partition_in_key_order_without_sorting_the_table``,
  ``test_an_index_query_still_sorts_by_the_index_key`` and
  ``test_a_query_reads_the_items_in_range_and_answers_as_moto_does``.

What moto does as AWS does but needlessly slowly (each answer the same as unpatched moto's):

* ``transact``: a TransactWriteItems keeps copies of the items it touches, not of every table,
  for its all-or-nothing; fidelity's
  ``test_a_failed_transaction_leaves_every_item_as_it_was_and_copies_only_those``.
* ``expressions``: update and condition expressions parsed once per text (and shape), an
  update's tree validated and copied cheaply; fidelity's
  ``test_an_expression_is_parsed_once_and_its_values_still_decide``,
  ``test_an_update_is_validated_and_applied_as_moto_does_it`` and the two ``test_a_condition_*``.
* ``serialize``: DynamoDB's JSON answers serialized without moto's generic walk, byte for
  byte; fidelity's ``test_a_dynamodb_answer_is_serialized_as_moto_serializes_it_without_its_generic_walk``.
* ``sqs`` (speed-ups): sends and receives that do not count the queue per message, the clock
  read without datetimes, a queue's attribute names and named attributes built once, receipt
  handles drawn at once; fidelity's ``test_a_receive_does_not_count_the_queue_*``,
  ``test_a_send_does_not_count_the_queue_*``, ``test_a_fifo_queue_still_deduplicates_by_content``,
  ``test_a_named_attribute_is_read_*``, ``test_sqs_reads_the_wall_*`` and
  ``test_a_queues_attribute_names_are_remembered_*``.
* ``kms``: symmetric keys share one unused private key (KMS never signs with one); fidelity's
  ``test_symmetric_keys_share_an_unused_private_key_and_still_encrypt_while_signing_keys_get_their_own``.
* ``dispatch``: moto's server finds a host's backend once, and a handler class's methods are
  listed once; fidelity's ``test_moto_server_looks_up_a_hosts_backend_once`` and
  ``test_moto_lists_a_handler_class_methods_once``.
* ``resources``: moto's resource files parsed once per moto version and kept beside the
  virtual environment; tests/integration/test_moto_resources.py compares each with moto's parse.

For the local runtime, not AWS:

* ``clock``: moto's SQS on the runtime's clock (virtual or the wall), set and looked at through
  ``POST``/``GET /sundial/clock`` (``local.moto_server.CLOCK_PATH``);
  tests/integration/test_moto_clock.py.
"""
